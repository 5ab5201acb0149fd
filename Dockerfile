# The nanopay agent (port 7860) in strict mode: it owns its wallet, kept in the /data volume.
#   docker build -t nanopay-agent .
#   docker run -d -p 7860:7860 -v nanopay-agent:/data -e NANOPAY_AGENT_TOKEN=… -e NANOPAY_API_URL=… nanopay-agent

FROM node:24-slim AS build
# The native proof-of-work addon needs a compiler; without it nanopay falls back to WASM. It is built for
# every x86-64 CPU, not the build machine's (binding.gyp: one kernel per instruction set, the best one the
# host has chosen when it loads), so the image runs wherever it is pulled.
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json binding.gyp tsconfig.json tsconfig.build.json ./
COPY scripts scripts
COPY native native
COPY bin bin
COPY src src
RUN npm ci && npm prune --omit=dev && mkdir -p build

FROM node:24-slim
ENV NODE_ENV=production \
    AGENT_MODE=production \
    NANO_WORK_MODE=auto \
    NANOPAY_CONFIG_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json /app/oclif.manifest.json ./
COPY --from=build /app/bin bin
COPY --from=build /app/dist dist
COPY --from=build /app/build build
COPY --from=build /app/node_modules node_modules
# The image's unprivileged user owns only the data volume.
RUN mkdir -p /data && chown node:node /data && chmod 700 /data
USER node
VOLUME /data
EXPOSE 7860
# Off loopback the agent requires a token: give it with NANOPAY_AGENT_TOKEN (at least 16 characters).
CMD ["node", "bin/run.js", "agent", "--host", "0.0.0.0", "--port", "7860"]
