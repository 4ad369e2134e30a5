-- paced.lua - the requests of single.lua at a fixed rate instead of as
-- fast as the server answers (contrib/bench, part logins): wrk has no -R,
-- so delay() hands each request the next slot of a schedule of
-- ENSIGN_BENCH_RATE requests/s (split over wrk's threads) and waits until
-- it comes. The schedule never slips: when every connection is waiting
-- for an answer (a stalled server), the slots that pass pile up and go out
-- as soon as connections free up, so the offered rate holds (an open loop
-- while a connection is free). wrk times a request from when it is sent;
-- how late each was sent against its slot (the wait for a free connection,
-- which wrk's latency leaves out) is reported beside it. The result line
-- is report.lua's with two more fields:
--   RESULT <requests> <seconds> <req/s> <p50 us> <p99 us> <errors> <late p99 us> <late max us>
-- Needs wrk built with LuaJIT (its ffi gives a microsecond clock).
local dir = os.getenv("ENSIGN_BENCH_DIR")
dofile(dir .. "/context.lua")
local ffi = require("ffi")
ffi.cdef [[
struct bench_timespec { long tv_sec; long tv_nsec; };
int clock_gettime(int clock, struct bench_timespec *ts);
]]
local ts = ffi.new("struct bench_timespec")
local function now_us()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1e6 + tonumber(ts.tv_nsec) / 1e3
end

local threads = {}
local context_setup = setup

function setup(thread)
  context_setup(thread)
  table.insert(threads, thread)
end

local interval -- us between this thread's slots
local next_slot
local slots, first, last = {}, 1, 0 -- slots handed out by delay(), not yet sent
late = {} -- us each request was sent after its slot (read by done())

local context_init = init
function init(args)
  context_init(args)
  -- init() runs in the thread's own Lua state, which does not see setup()'s
  -- table of threads: contrib/bench passes wrk's -t
  local rate = tonumber(os.getenv("ENSIGN_BENCH_RATE"))
  interval = 1e6 * (tonumber(os.getenv("ENSIGN_BENCH_THREADS")) or 1) / rate
end

function delay()
  local now = now_us()
  next_slot = (next_slot or now) + interval
  last = last + 1
  slots[last] = next_slot
  local wait = (next_slot - now) / 1e3
  return wait > 0 and math.floor(wait) or 0
end

function request()
  local now = now_us()
  if first <= last then
    local d = now - slots[first]
    late[#late + 1] = d > 0 and d or 0
    slots[first] = nil
    first = first + 1
  end
  return evaluation_request("/ofrep/v1/evaluate/flags/flag-07")
end

function done(summary, latency, requests)
  local all = {}
  for _, thread in ipairs(threads) do
    for _, d in ipairs(thread:get("late")) do
      all[#all + 1] = d
    end
  end
  table.sort(all)
  local p99 = #all > 0 and all[math.max(1, math.ceil(#all * 0.99))] or 0
  local max = #all > 0 and all[#all] or 0
  local seconds = summary.duration / 1e6
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.timeout + e.status
  io.write(string.format("RESULT %d %.3f %.1f %.1f %.1f %d %.1f %.1f\n", summary.requests,
    seconds, summary.requests / seconds, latency:percentile(50), latency:percentile(99), errors,
    p99, max))
end
