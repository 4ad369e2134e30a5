-- mgmt_detail.lua - GET /v1/orgs/ORG/flags/FLAG, a flag with 20 rules and
-- the revisions management.sql gave it (ENSIGN_BENCH_FLAG: detail-5 or
-- detail-500) (contrib/bench).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "GET"
wrk.path = "/v1/orgs/" .. os.getenv("ENSIGN_BENCH_ORG") .. "/flags/" .. os.getenv("ENSIGN_BENCH_FLAG")
wrk.headers["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_TOKEN")
