# syntax=docker/dockerfile:1
#
# outbox-relay container image (SPEC §8): multi-stage build on Debian 12,
# runs as the unprivileged user `outbox` (uid 10001).
#
#   docker build -t outbox-relay .
#   docker run --rm -v "$PWD/config.yaml:/etc/outbox-relay/config.yaml:ro" \
#     -e ORDER_DB_PASSWORD=... -p 127.0.0.1:9464:9464 outbox-relay
#
# In a container the relay's `http.listen` must be 0.0.0.0:9464 for anything
# outside the container (Prometheus, kubelet probes) to reach it; the
# HEALTHCHECK below works with either address.

############################## build ##############################
FROM debian:12 AS build

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libboost-dev libmysqlcppconn-dev librdkafka-dev libyaml-cpp-dev \
      prometheus-cpp-dev libcli11-dev nlohmann-json3-dev libspdlog-dev \
      libfmt-dev catch2 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .
# Tests and tools (mock broker, benchmarks) are not part of the image.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DOUTBOX_BUILD_TESTS=OFF \
      -DOUTBOX_BUILD_TOOLS=OFF \
 && cmake --build build \
 && strip build/outbox-relay

############################## runtime ##############################
FROM debian:12-slim

RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmysqlcppconn7v5 librdkafka1 librdkafka++1 libyaml-cpp0.7 \
      libprometheus-cpp-core1.0 libspdlog1.10 libfmt9 \
      curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 outbox \
 && useradd --system --uid 10001 --gid outbox --no-create-home \
      --home-dir /nonexistent --shell /usr/sbin/nologin outbox \
 && install -d -m 0755 /etc/outbox-relay

COPY --from=build /src/build/outbox-relay /usr/local/bin/outbox-relay

# Fail the image build, not the first start, if a shared library the binary
# links is missing from the runtime packages above.
RUN if ldd /usr/local/bin/outbox-relay | grep -q 'not found'; then \
      echo 'missing runtime libraries:' >&2; \
      ldd /usr/local/bin/outbox-relay | grep 'not found' >&2; exit 1; \
    fi \
 && /usr/local/bin/outbox-relay version

USER 10001:10001
EXPOSE 9464
STOPSIGNAL SIGTERM

HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD curl -fsS http://127.0.0.1:9464/healthz || exit 1

ENTRYPOINT ["/usr/local/bin/outbox-relay"]
CMD ["run", "--config", "/etc/outbox-relay/config.yaml"]
