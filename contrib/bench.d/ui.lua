-- ui.lua - GET of a dashboard file (ENSIGN_BENCH_UI_PATH, the biggest) as a
-- browser asks for it, gzip accepted (contrib/bench, part ui).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "GET"
wrk.path = os.getenv("ENSIGN_BENCH_UI_PATH")
wrk.headers["Accept-Encoding"] = "gzip, deflate, br"
