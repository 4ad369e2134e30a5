// ofrep-clients.mjs - drives a running ensignd with the real OpenFeature
// JavaScript SDKs and prints what they resolved, one JSON object per line.
//
// Run by tests/e2e/test_evaluation.py as `node ofrep-clients.mjs SPEC`,
// where SPEC is JSON:
//   {baseUrl, sdkKey,
//    server: [{key, type, default, context}],       // @openfeature/server-sdk
//    web: {context, pollMs, checks: [{key, type, default}], watchKey}}
//                                                    // @openfeature/web-sdk
// Lines printed, in order:
//   {"phase":"server","results":[...]}   details per server check
//   {"phase":"web","results":[...],"requests":[...]}
//                                        details per web check (bulk) and
//                                        the initial bulk request
//   {"phase":"polled","requests":[...]}  the bulk requests of the polling
//   {"phase":"waiting"}                  then it reads one line from stdin
//                                        (the test changed the flag)
//   {"phase":"changed","result":{...},"requests":[...]}
// Each result: {key, value, variant, reason, errorCode, metadata}.
// Exit status 0 unless something threw (then the error is on stderr).

import { createInterface } from 'node:readline';
import { OpenFeature as ServerFeature } from '@openfeature/server-sdk';
import { OFREPProvider } from '@openfeature/ofrep-provider';
import { OpenFeature as WebFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';

const spec = JSON.parse(process.argv[2]);

function emit(object) {
  process.stdout.write(JSON.stringify(object) + '\n');
}

function summary(key, details) {
  return {
    key,
    value: details.value,
    variant: details.variant ?? null,
    reason: details.reason ?? null,
    errorCode: details.errorCode ?? null,
    metadata: details.flagMetadata ?? {},
  };
}

const methods = {
  boolean: 'getBooleanDetails',
  string: 'getStringDetails',
  number: 'getNumberDetails',
  object: 'getObjectDetails',
};

async function runServer() {
  const provider = new OFREPProvider({
    baseUrl: spec.baseUrl,
    headers: [['Authorization', `Bearer ${spec.sdkKey}`]],
  });
  await ServerFeature.setProviderAndWait(provider);
  const client = ServerFeature.getClient();
  const results = [];
  for (const check of spec.server) {
    const details = await client[methods[check.type]](check.key, check.default, check.context);
    results.push(summary(check.key, details));
  }
  emit({ phase: 'server', results });
  await ServerFeature.close();
}

// Records every bulk request the web provider makes: what it sent as
// If-None-Match and what came back.
const requests = [];
async function recordingFetch(input, init) {
  const request = new Request(input, init);
  const ifNoneMatch = request.headers.get('If-None-Match');
  const response = await fetch(request);
  requests.push({
    url: new URL(request.url).pathname,
    status: response.status,
    ifNoneMatch,
    etag: response.headers.get('ETag'),
  });
  return response;
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function readLine() {
  const lines = createInterface({ input: process.stdin });
  return new Promise((resolve) => lines.once('line', (line) => {
    lines.close();
    resolve(line);
  }));
}

function nextConfigurationChange(timeoutMs) {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    WebFeature.addHandler(ProviderEvents.ConfigurationChanged, () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function runWeb() {
  const web = spec.web;
  await WebFeature.setContext(web.context);
  const provider = new OFREPWebProvider({
    baseUrl: spec.baseUrl,
    headers: [['X-API-Key', spec.sdkKey]],
    pollInterval: web.pollMs,
    cacheMode: 'disabled',
    fetchImplementation: recordingFetch,
  });
  await WebFeature.setProviderAndWait(provider);
  const client = WebFeature.getClient();
  const resolveAll = () => web.checks.map((check) =>
    summary(check.key, client[methods[check.type]](check.key, check.default)));
  emit({ phase: 'web', results: resolveAll(), requests: requests.splice(0) });
  await sleep(web.pollMs * 4);
  emit({ phase: 'polled', requests: requests.splice(0) });
  const changed = nextConfigurationChange(5000);
  emit({ phase: 'waiting' });
  await readLine();
  const seen = await changed;
  const watch = web.checks.find((check) => check.key === web.watchKey);
  emit({
    phase: 'changed',
    event: seen,
    result: summary(watch.key, client[methods[watch.type]](watch.key, watch.default)),
    requests: requests.splice(0),
  });
  await WebFeature.close();
}

try {
  await runServer();
  await runWeb();
  process.exit(0);
} catch (error) {
  console.error(error);
  process.exit(1);
}
