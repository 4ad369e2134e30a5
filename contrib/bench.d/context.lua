-- context.lua - the body a simulated SDK client sends (loaded with dofile
-- by single.lua and bulk.lua; contrib/bench.d/etags.py builds the same
-- shape): a new targetingKey on every request and four more attributes
-- drawn from small sets that never match the rules of fixture.sql (country
-- not NL/BE/LU, version below 3.0.0, email not @example.org), so every
-- evaluation walks all three rules and ends in the 50/50 rollout.
-- evaluation_request(path) is one POST of such a body with the SDK key of
-- ENSIGN_BENCH_SDK_KEY.
local countries = {"DE", "FR", "US", "GB", "JP", "BR", "IN", "ES"}
local plans = {"free", "pro", "team", "enterprise"}
local serial = 0
local prefix = string.format("%x", math.random(0, 0xffffff))

function next_body()
  serial = serial + 1
  local n = serial
  return string.format('{"context":{"targetingKey":"user-%s-%d","country":"%s","plan":"%s",' ..
    '"version":"2.%d.%d","email":"user%d@example.com"}}', prefix, n,
    countries[n % #countries + 1], plans[n % #plans + 1], n % 10, n % 7, n % 1000)
end

local headers = {
  ["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_SDK_KEY"),
  ["Content-Type"] = "application/json",
}

function evaluation_request(path)
  return wrk.format("POST", path, headers, next_body())
end

function setup(thread)
  thread:set("seed", math.random(1, 1e9))
end

function init(args)
  math.randomseed(seed or os.time())
  prefix = string.format("%x", math.random(0, 0xffffff))
end
