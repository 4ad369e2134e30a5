-- unknown_keys.lua - POST /ofrep/v1/evaluate/flags/KEY for keys that name
-- no flag (404 FLAG_NOT_FOUND, counted as unknown keys), a different one of
-- ENSIGN_BENCH_UNKNOWN_KEYS (1000) keys on each request, in turn, built in
-- request() with the same per-request context as known_keys.lua (contrib/
-- bench, part unknown). The keys are ENSIGN_BENCH_UNKNOWN_PREFIX
-- ("missing-flag-") and a number; a prefix outside the key pattern
-- ("Missing-Flag-") makes the same 404s without counting anything. Every
-- answer is a 404, which wrk's summary counts among the errors.
local dir = os.getenv("ENSIGN_BENCH_DIR")
dofile(dir .. "/report.lua")
dofile(dir .. "/context.lua")

local keys = tonumber(os.getenv("ENSIGN_BENCH_UNKNOWN_KEYS") or "1000")
local prefix = os.getenv("ENSIGN_BENCH_UNKNOWN_PREFIX") or "missing-flag-"
local n = 0

function request()
  n = n + 1
  return evaluation_request(string.format("/ofrep/v1/evaluate/flags/%s%d", prefix, n % keys))
end
