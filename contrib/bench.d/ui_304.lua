-- ui_304.lua - the same dashboard file revalidated: If-None-Match with its
-- ETag (ENSIGN_BENCH_UI_ETAG), answered 304 (contrib/bench, part ui).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "GET"
wrk.path = os.getenv("ENSIGN_BENCH_UI_PATH")
wrk.headers["Accept-Encoding"] = "gzip, deflate, br"
wrk.headers["If-None-Match"] = os.getenv("ENSIGN_BENCH_UI_ETAG")
