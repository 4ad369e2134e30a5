-- acc_get.lua - GET ENSIGN_BENCH_PATH with the organization token
-- (contrib/bench, part accounts).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "GET"
wrk.path = os.getenv("ENSIGN_BENCH_PATH")
wrk.headers["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_TOKEN")
