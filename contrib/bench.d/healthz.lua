-- healthz.lua - GET /v1/healthz, the baseline (contrib/bench).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "GET"
wrk.path = "/v1/healthz"
