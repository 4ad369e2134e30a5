-- mgmt_detail.lua - GET /v1/orgs/ORG/flags/twenty, a flag with 20 rules
-- (contrib/bench).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "GET"
wrk.path = "/v1/orgs/" .. os.getenv("ENSIGN_BENCH_ORG") .. "/flags/twenty"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_TOKEN")
