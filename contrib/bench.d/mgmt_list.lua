-- mgmt_list.lua - GET /v1/orgs/ORG/flags with 1,000 flags (contrib/bench).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "GET"
wrk.path = "/v1/orgs/" .. os.getenv("ENSIGN_BENCH_ORG") .. "/flags"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_TOKEN")
