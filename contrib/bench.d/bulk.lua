-- bulk.lua - POST /ofrep/v1/evaluate/flags (every flag of the environment)
-- with a five-attribute context (contrib/bench).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
wrk.method = "POST"
wrk.path = "/ofrep/v1/evaluate/flags"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_SDK_KEY")
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"context":{"targetingKey":"user-4711","country":"DE","plan":"enterprise",' ..
  '"version":"2.4.1","email":"jane@example.com"}}'
