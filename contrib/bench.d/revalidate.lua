-- revalidate.lua - the bulk request of bulk.lua sent with the ETag of its
-- answer in If-None-Match, so every answer is 304 (contrib/bench).
-- ENSIGN_BENCH_ETAG: the ETag.
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "POST"
wrk.path = "/ofrep/v1/evaluate/flags"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_SDK_KEY")
wrk.headers["Content-Type"] = "application/json"
wrk.headers["If-None-Match"] = os.getenv("ENSIGN_BENCH_ETAG")
wrk.body = '{"context":{"targetingKey":"user-4711","country":"DE","plan":"enterprise",' ..
  '"version":"2.4.1","email":"jane@example.com"}}'

