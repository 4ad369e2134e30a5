-- mgmt_patch.lua - PATCH one rule of the flag `twenty`, each request with a
-- different description so every request is a real write (contrib/bench).
dofile(os.getenv("ENSIGN_BENCH_DIR") .. "/report.lua")
local path = "/v1/orgs/" .. os.getenv("ENSIGN_BENCH_ORG") ..
  "/flags/twenty/environments/production/rules/" .. os.getenv("ENSIGN_BENCH_RULE")
local headers = {
  ["Authorization"] = "Bearer " .. os.getenv("ENSIGN_BENCH_TOKEN"),
  ["Content-Type"] = "application/json",
}
local counter = 0
function setup(thread)
  thread:set("id", math.random(1, 1000000))
end
function request()
  counter = counter + 1
  local body = string.format('{"description":"bench %d-%d"}', id or 0, counter)
  return wrk.format("PATCH", path, headers, body)
end
