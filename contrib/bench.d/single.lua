-- single.lua - POST /ofrep/v1/evaluate/flags/flag-07, each request with its
-- own context (context.lua) built in request() (contrib/bench).
-- ENSIGN_BENCH_SDK_KEY: the SDK key.
local dir = os.getenv("ENSIGN_BENCH_DIR")
dofile(dir .. "/report.lua")
dofile(dir .. "/context.lua")
local headers = {
  ["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_SDK_KEY"),
  ["Content-Type"] = "application/json",
}

function request()
  return wrk.format("POST", "/ofrep/v1/evaluate/flags/flag-07", headers, next_body())
end
