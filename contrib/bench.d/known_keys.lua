-- known_keys.lua - POST /ofrep/v1/evaluate/flags/flag-NN, a different one of
-- the fixture's 20 flags on each request (in turn), each request with its
-- own context (context.lua) built in request() (contrib/bench, part
-- unknown: the load beside unknown_keys.lua).
local dir = os.getenv("ENSIGN_BENCH_DIR")
dofile(dir .. "/report.lua")
dofile(dir .. "/context.lua")

local n = 0

function request()
  n = n + 1
  return evaluation_request(string.format("/ofrep/v1/evaluate/flags/flag-%02d", n % 20))
end
