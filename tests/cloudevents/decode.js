// Decodes Kafka messages with the CloudEvents SDK for JavaScript (the npm
// package cloudevents: its Kafka binding, Kafka.isEvent and Kafka.toEvent)
// and validates each event against the specification's JSON schema.
// tests/integration/cloudevents_sdk_test.cc writes the messages the relay
// produced and checks what this prints.
//
// Usage: node decode.js SDK_DIR MESSAGES_FILE
//   MESSAGES_FILE: one JSON object per line, {"key", "value", "headers"}
//   (headers: an object of strings), as the binding's Message has them.
// Prints one JSON object per message: {"is_event": bool, "event": {...the
// event's attributes, extensions and data...}} or {"is_event": bool,
// "error": "..."} when the SDK refuses it.
'use strict';
const fs = require('fs');
const path = require('path');

const [sdkDir, file] = process.argv.slice(2);
const { Kafka } = require(path.join(sdkDir, 'node_modules', 'cloudevents'));

for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
  if (line === '') continue;
  const message = JSON.parse(line);
  const out = { is_event: Boolean(Kafka.isEvent(message)) };
  try {
    const event = Kafka.toEvent(message);
    // toEvent builds the event without validating it; validate() checks the
    // required attributes and their formats (source a URI reference, time
    // RFC 3339) and throws a ValidationError with the schema's findings.
    event.validate();
    out.event = JSON.parse(JSON.stringify(event));
  } catch (e) {
    out.error = String(e.message);
  }
  console.log(JSON.stringify(out));
}
