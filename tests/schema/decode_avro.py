#!/usr/bin/python3
"""Decodes Kafka message values in Confluent's wire format with Debian's
python3-avro, independently of the relay's avro-c: the tests compare what it
prints with the payload the relay was given.

Usage: decode_avro.py SCHEMA_FILE VALUE_FILE
  SCHEMA_FILE  the Avro schema (JSON text) registered under the value's id
  VALUE_FILE   the message value: magic byte 0, 4-byte big-endian schema id,
               Avro binary
Prints {"schema_id": N, "value": ...} as one JSON line: timestamps as
RFC 3339 text in UTC, dates as YYYY-MM-DD, decimals and uuids as their text, bytes
as text (ISO-8859-1, one character per byte). Exit 1 with the reason on
stderr when the value does not decode or bytes are left over.
"""
import datetime
import decimal
import io
import json
import struct
import sys
import uuid

import avro.io
import avro.schema


def plain(v):
    if isinstance(v, datetime.datetime):
        return v.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(v, datetime.date):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, bytes):
        return v.decode("latin-1")
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def main():
    schema = avro.schema.parse(open(sys.argv[1]).read())
    data = open(sys.argv[2], "rb").read()
    if len(data) < 5 or data[0] != 0:
        sys.exit("not Confluent's wire format: no magic byte 0")
    (schema_id,) = struct.unpack(">i", data[1:5])
    stream = io.BytesIO(data[5:])
    value = avro.io.DatumReader(schema).read(avro.io.BinaryDecoder(stream))
    if stream.tell() != len(data) - 5:
        sys.exit(f"{len(data) - 5 - stream.tell()} bytes left over after the value")
    print(json.dumps({"schema_id": schema_id, "value": plain(value)}, sort_keys=True))


if __name__ == "__main__":
    main()
