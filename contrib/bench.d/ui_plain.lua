-- ui_plain.lua - the same dashboard file without gzip (contrib/bench, part ui).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "GET"
wrk.path = os.getenv("ENSIGN_BENCH_UI_PATH")
