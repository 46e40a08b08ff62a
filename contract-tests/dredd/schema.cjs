/*
 * What Dredd's OpenAPI 3 reader leaves out, taken from the 3.1 document (CONTRACT_DOC): the
 * response body schema (as a self-contained draft-07 schema for Gavel) and the names of the
 * required response headers.
 */
const fs = require('node:fs');

const DOC = process.env.CONTRACT_DOC ? JSON.parse(fs.readFileSync(process.env.CONTRACT_DOC, 'utf8')) : undefined;

function deref(node) {
  let current = node;
  for (let i = 0; i < 20 && current && typeof current.$ref === 'string'; i++) {
    current = current.$ref
      .slice(2)
      .split('/')
      .reduce((n, seg) => n[seg.replace(/~1/g, '/').replace(/~0/g, '~')], DOC);
  }
  return current;
}

/** The documented response body schema as draft-07 (components become definitions). */
function bodySchema(method, pathTemplate, status) {
  if (!DOC) return undefined;
  const op = deref(DOC.paths[pathTemplate] || {})[method.toLowerCase()];
  const response = op && op.responses && deref(op.responses[String(status)]);
  const media = response && response.content && response.content['application/json'];
  if (!media || !media.schema) return undefined;
  const text = JSON.stringify({
    $schema: 'http://json-schema.org/draft-07/schema#',
    definitions: (DOC.components && DOC.components.schemas) || {},
    allOf: [media.schema],
  })
    .replace(/"#\/components\/schemas\//g, '"#/definitions/')
    // OpenAPI's numeric format hints are no JSON Schema formats; Gavel's ajv 6 rejects them.
    .replace(/"format":"(int32|int64|float|double)",?/g, '');
  return JSON.parse(text.replace(/,}/g, '}'));
}

/** Names of the headers the 3.1 document marks required on that response. */
function requiredHeaders(method, pathTemplate, status) {
  if (!DOC) return undefined;
  const op = deref(DOC.paths[pathTemplate] || {})[method.toLowerCase()];
  const response = op && op.responses && deref(op.responses[String(status)]);
  if (!response) return undefined;
  return Object.entries(response.headers || {})
    .filter(([, h]) => deref(h).required)
    .map(([name]) => name.toLowerCase());
}

module.exports = { bodySchema, requiredHeaders };
