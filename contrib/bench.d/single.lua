-- single.lua - POST /ofrep/v1/evaluate/flags/flag-07 with a five-attribute
-- context (contrib/bench). ENSIGN_BENCH_SDK_KEY: the SDK key.
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "POST"
wrk.path = "/ofrep/v1/evaluate/flags/flag-07"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_SDK_KEY")
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"context":{"targetingKey":"user-4711","country":"DE","plan":"enterprise",' ..
  '"version":"2.4.1","email":"jane@example.com"}}'
