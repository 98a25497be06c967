# The city data platform's image: one program whose mode is its argument (api, data-api, idp, worker,
# all; see docs/configuration.md "Processes" and docs/production.md "Container image").
#
#   docker build -t city-data-platform .
#   podman build --format docker -t city-data-platform .   # docker format: OCI images drop HEALTHCHECK
#
# NODE_IMAGE is the base of both stages. Production builds keep the default, the official Node image
# on Debian bookworm; the image test (test/deploy/image.test.ts) passes a bookworm base it builds
# itself from Debian's packages plus the npm registry's Node 24, because it has no container registry.
# That build argument is the only difference between the tested build and a production one.
ARG NODE_IMAGE=docker.io/library/node:24-bookworm-slim

# ---- build: dependencies with dev tools, TypeScript compiled, dev dependencies pruned ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The manifests first, sources after: npm ci's `prepare` runs the TypeScript build, so it needs both.
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm ci --no-audit --no-fund \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: Node, the compiled program, production dependencies, MapServer ----
FROM ${NODE_IMAGE} AS runtime

# MapServer 8 runs as a FastCGI pool behind the data API's OWS endpoints (mapserv from cgi-mapserver
# and mapserver-bin, spawned by spawn-fcgi). postgresql-client (psql, pg_isready, pg_dump) is for the
# operator: looking at the database from where the service runs, a dump before an upgrade.
# postgis brings shp2pgsql, pgsql2shp and raster2pgsql, for an operator loading shapefiles into a
# dataset's schema with the DATABASE_URL at hand. The program never calls them; they stay because
# they cost 361 kB here: the libraries they need (GDAL, GEOS, PROJ, libpq) come with MapServer and
# postgresql-client anyway (measured with apt-get install --dry-run in the built image).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cgi-mapserver mapserver-bin spawn-fcgi postgresql-client postgis \
 && rm -rf /var/lib/apt/lists/*

RUN groupadd --gid 10001 app \
 && useradd --uid 10001 --gid app --home-dir /app --no-create-home --shell /usr/sbin/nologin app

WORKDIR /app
COPY --from=build --chown=root:root /app/package.json ./package.json
COPY --from=build --chown=root:root /app/node_modules ./node_modules
COPY --from=build --chown=root:root /app/dist ./dist
# The program's files stay root's (read-only to the service); only the data folder is its own.
RUN install -d -o app -g app -m 0750 /app/data

# Production by default: DEV_IDP=off keeps the development identity provider off even if NODE_ENV is
# changed; a trial turns both back on explicitly (compose.yaml).
ENV NODE_ENV=production DEV_IDP=off DATA_DIR=/app/data
# A young generation of up to 64 MB per semi-space (V8's default: 16). A SensorThings page with
# $expand allocates a few MB while it is read and written; with 32 such requests in flight the default
# space filled before they ended, so the scavenger copied their objects and promoted them to the old
# generation (a fifth of the gateway's CPU in a profile). It is a maximum, reached only under load.
# The benchmarks start the service with these options too (bench/settings.ts reads them from here).
ENV NODE_OPTIONS=--max-semi-space-size=64
# No VOLUME: with DATABASE_URL the folder stays empty, and a declared volume would leave an anonymous
# volume behind every container. For the embedded database mount one at /app/data.
USER 10001:10001

# 8080 management API, 8081 data API gateway (HTTP, WebSocket MQTT), 1884 MQTT over TCP.
EXPOSE 8080 8081 1884

# Ready means the database answers too. Node's fetch, since the slim base has no curl. It asks PORT,
# the management API's port: in mode data-api give the probe DATA_PORT instead (docs/production.md,
# "Container image").
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT || 8080}/health/ready`, { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# The program drains on SIGTERM; exec form keeps node the container's first process, so it gets it.
STOPSIGNAL SIGTERM
CMD ["node", "dist/server.js", "all"]
