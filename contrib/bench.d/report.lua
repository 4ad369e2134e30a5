-- report.lua - the machine-readable result line every bench.d script prints
-- when wrk is done (loaded with dofile by the scripts beside it):
--   RESULT <requests> <seconds> <req/s> <p50 us> <p99 us> <errors>
-- errors counts connection, read, write and timeout errors and statuses
-- above 399 (304 is not an error).
function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local e = summary.errors
  local errors = e.connect + e.read + e.write + e.timeout + e.status
  io.write(string.format("RESULT %d %.3f %.1f %.1f %.1f %d\n", summary.requests, seconds,
    summary.requests / seconds, latency:percentile(50), latency:percentile(99), errors))
end
