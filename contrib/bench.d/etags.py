"""etags.py PORT SDK_KEY COUNT OUT - the contexts revalidate.lua sends and
their bulk ETags (contrib/bench): COUNT bodies of context.lua's shape, each
with its own targetingKey, POSTed once to /ofrep/v1/evaluate/flags; writes
"ETag<TAB>body" lines to OUT. Exits 1 if an answer is not 200 with an ETag."""
import http.client
import json
import sys

port, key, count, out = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
countries = ["DE", "FR", "US", "GB", "JP", "BR", "IN", "ES"]
plans = ["free", "pro", "team", "enterprise"]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
lines = []
for n in range(1, count + 1):
    body = json.dumps({"context": {
        "targetingKey": "user-revalidate-%d" % n, "country": countries[n % 8],
        "plan": plans[n % 4], "version": "2.%d.%d" % (n % 10, n % 7),
        "email": "user%d@example.com" % (n % 1000)}}, separators=(",", ":"))
    conn.request("POST", "/ofrep/v1/evaluate/flags", body, {
        "Authorization": "Bearer " + key, "Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.read()
    etag = resp.getheader("ETag")
    if resp.status != 200 or not etag:
        sys.exit("etags.py: answer %d without an ETag" % resp.status)
    lines.append(etag + "\t" + body)
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
