-- crash_drill.lua - the wrk load of tests/e2e/test_crash_drills.py:
-- POST /ofrep/v1/evaluate/flags/$ENSIGN_DRILL_FLAG with the SDK keys of
-- $ENSIGN_DRILL_KEYS (space-separated) in turn, a different targetingKey
-- each time. Counts the answers per status in every thread; when wrk is
-- done prints one line
--   DRILL {"requests":N,"status":{"200":N,...},"connect":N,"read":N,"write":N,"timeout":N}
-- (socket errors as wrk counts them: a connection reset by a killed worker
-- is a read error, after which wrk reconnects).
local keys = {}
for key in string.gmatch(os.getenv("ENSIGN_DRILL_KEYS") or "", "%S+") do
  keys[#keys + 1] = key
end
local path = "/ofrep/v1/evaluate/flags/" .. (os.getenv("ENSIGN_DRILL_FLAG") or "")
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  threads[#threads + 1] = thread
end

function init(args)
  counts = {}
  sent = 0
end

function request()
  sent = sent + 1
  local key = keys[sent % #keys + 1]
  return wrk.format("POST", path,
    {["Authorization"] = "Bearer " .. key, ["Content-Type"] = "application/json"},
    '{"context":{"targetingKey":"user-' .. id .. '-' .. sent .. '"}}')
end

function response(status, headers, body)
  counts[status] = (counts[status] or 0) + 1
end

function done(summary, latency, requests)
  local parts = {}
  local total = {}
  for _, thread in ipairs(threads) do
    for status, n in pairs(thread:get("counts")) do
      total[status] = (total[status] or 0) + n
    end
  end
  for status, n in pairs(total) do
    parts[#parts + 1] = string.format('"%d":%d', status, n)
  end
  local e = summary.errors
  io.write(string.format(
    'DRILL {"requests":%d,"status":{%s},"connect":%d,"read":%d,"write":%d,"timeout":%d}\n',
    summary.requests, table.concat(parts, ","), e.connect, e.read, e.write, e.timeout))
end
