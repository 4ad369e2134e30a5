// server.js - the comparison server of contrib/bench: @openfeature/flagd-core
// behind OFREP, node:cluster with 2 workers (as ensignd runs 2), on
// 127.0.0.1:PORT (argv[2]). flags.json holds contrib/bench.d/fixture.sql's
// 20 production flags in flagd's format. Routes, as ensignd's:
//   POST /ofrep/v1/evaluate/flags/{key}  one flag, 200 or 404 FLAG_NOT_FOUND
//   POST /ofrep/v1/evaluate/flags        every flag ({flags: [...]})
//   GET  /v1/healthz                     {"status":"ok"}
// The Authorization header is not checked: the comparison is evaluation.
'use strict';
const cluster = require('node:cluster');
const http = require('node:http');
const fs = require('node:fs');
const path = require('node:path');
const { FlagdCore } = require('@openfeature/flagd-core');

const port = Number(process.argv[2]);
const workers = Number(process.env.WORKERS || 2);

if (cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on('exit', () => process.exit(1));
  process.on('SIGTERM', () => {
    for (const id in cluster.workers) cluster.workers[id].kill('SIGTERM');
    process.exit(0);
  });
} else {
  const core = new FlagdCore();
  core.setConfigurations(fs.readFileSync(path.join(__dirname, 'flags.json'), 'utf8'));
  const logger = { error() {}, warn() {}, info() {}, debug() {} };
  const PREFIX = '/ofrep/v1/evaluate/flags';

  const result = (d) => ({
    key: d.flagKey, value: d.value, reason: d.reason, variant: d.variant,
    metadata: d.flagMetadata || {},
  });
  const send = (res, status, body) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
  };

  http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/v1/healthz') return send(res, 200, { status: 'ok' });
    if (req.method !== 'POST' || !req.url.startsWith(PREFIX)) return send(res, 404, { errorCode: 'GENERAL' });
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      let context;
      try {
        context = JSON.parse(Buffer.concat(chunks).toString('utf8')).context || {};
      } catch (e) {
        return send(res, 400, { errorCode: 'PARSE_ERROR' });
      }
      if (req.url === PREFIX) {
        return send(res, 200, { flags: core.resolveAll(context, logger).map(result) });
      }
      const key = req.url.slice(PREFIX.length + 1);
      let d;
      try {
        d = core.resolveStringEvaluation(key, '', context, logger);
      } catch (e) {
        d = { reason: 'ERROR' };
      }
      if (d.reason === 'ERROR') return send(res, 404, { key, errorCode: 'FLAG_NOT_FOUND' });
      return send(res, 200, result({ ...d, flagKey: key }));
    });
  }).listen(port, '127.0.0.1');
}
