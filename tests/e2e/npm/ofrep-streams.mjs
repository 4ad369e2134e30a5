// ofrep-streams.mjs - the OpenFeature web SDK with the OFREP web provider
// in SSE change detection against a running ensignd, the `eventsource`
// package standing in for the browser's EventSource.
//
// Run by tests/e2e/test_streams.py as `node ofrep-streams.mjs SPEC`, where
// SPEC is JSON {baseUrl, sdkKey, flagKey}. Prints one JSON object per line:
//   {"phase":"connect","url":...}     an EventSource was created
//   {"phase":"open"}                  a stream connected (again)
//   {"phase":"error","readyState":N}  a stream broke (1: reconnecting)
//   {"phase":"ready","value":V}       the provider is ready; V is flagKey
//   {"phase":"changed","value":V}     ConfigurationChanged; V is flagKey now
// It ends on a line "quit" on stdin (then exits 0) or when stdin closes.
// Polling stays off, so only a stream event can produce "changed".

import { createInterface } from 'node:readline';
import { EventSource as NodeEventSource } from 'eventsource';
import { OpenFeature, ProviderEvents } from '@openfeature/web-sdk';
import { OFREPWebProvider } from '@openfeature/ofrep-web-provider';

const spec = JSON.parse(process.argv[2]);

function emit(object) {
  process.stdout.write(JSON.stringify(object) + '\n');
}

class WatchedEventSource extends NodeEventSource {
  constructor(url, init) {
    super(url, init);
    emit({ phase: 'connect', url: String(url) });
    this.addEventListener('open', () => emit({ phase: 'open' }));
    this.addEventListener('error', () => emit({ phase: 'error', readyState: this.readyState }));
  }
}
globalThis.EventSource = WatchedEventSource;

async function main() {
  await OpenFeature.setContext({ targetingKey: 'browser-1' });
  const provider = new OFREPWebProvider({
    baseUrl: spec.baseUrl,
    headers: [['Authorization', `Bearer ${spec.sdkKey}`]],
    pollInterval: 0,
    changeDetection: 'sse',
    cacheMode: 'disabled',
  });
  await OpenFeature.setProviderAndWait(provider);
  const client = OpenFeature.getClient();
  const value = () => client.getBooleanValue(spec.flagKey, false);
  OpenFeature.addHandler(ProviderEvents.ConfigurationChanged, () => {
    emit({ phase: 'changed', value: value() });
  });
  emit({ phase: 'ready', value: value() });
  const lines = createInterface({ input: process.stdin });
  await new Promise((resolve) => {
    lines.on('line', (line) => line.trim() === 'quit' && resolve());
    lines.on('close', resolve);
  });
  lines.close();
  await OpenFeature.close();
}

try {
  await main();
  process.exit(0);
} catch (error) {
  console.error(error);
  process.exit(1);
}
