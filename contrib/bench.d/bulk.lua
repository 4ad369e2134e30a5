-- bulk.lua - POST /ofrep/v1/evaluate/flags (every flag of the environment),
-- each request with its own context (context.lua) built in request()
-- (contrib/bench).
local dir = os.getenv("ENSIGN_BENCH_DIR")
dofile(dir .. "/report.lua")
dofile(dir .. "/context.lua")

function request()
  return evaluation_request("/ofrep/v1/evaluate/flags")
end
