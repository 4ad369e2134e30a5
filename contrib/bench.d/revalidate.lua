-- revalidate.lua - bulk revalidation answered 304 with varying contexts
-- (contrib/bench). A 304 needs the ETag of the request's own context, so
-- contexts cannot be new on every request: etags.py asked the server for
-- the ETags of ENSIGN_BENCH_CONTEXTS contexts before the run and wrote
-- them to the file ENSIGN_BENCH_ETAGS ("ETag<TAB>body" lines); requests
-- take them in turn, so consecutive requests (and each connection's) carry
-- different contexts and the server parses, hashes and compares each.
local dir = os.getenv("ENSIGN_BENCH_DIR")
dofile(dir .. "/report.lua")
local key = os.getenv("ENSIGN_BENCH_SDK_KEY")
local requests = {}
local turn = 0

function init(args)
  for line in io.lines(os.getenv("ENSIGN_BENCH_ETAGS")) do
    local etag, body = line:match("^([^\t]+)\t(.+)$")
    requests[#requests + 1] = wrk.format("POST", "/ofrep/v1/evaluate/flags", {
      ["Authorization"] = "Bearer " .. key,
      ["Content-Type"] = "application/json",
      ["If-None-Match"] = etag,
    }, body)
  end
end

function request()
  turn = turn % #requests + 1
  return requests[turn]
end
