# stacks-cache-proxy container image.
#   docker build -t stacks-cache-proxy .
#   docker run -p 8080:8080 -e UPSTREAM_URLS=https://api.hiro.so stacks-cache-proxy
# Settings come from the environment (PORT, HOST, UPSTREAM_URLS, UPSTREAM_API_KEY, REDIS_URL,
# LOG_LEVEL, CONFIG_FILE); see the configuration page in docs/. docker-compose.yml runs it with
# Redis, Prometheus and Grafana.
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: compile TypeScript (dev dependencies needed) ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: the only install script in the tree is the `node` dev dependency's, which
# downloads a 189 MB Node 24 binary for the npm scripts of a developer's machine; the image
# already is Node 24. Its `node_modules/.bin/node` is then a stub, so the compiler runs on the
# image's own node directly instead of through `npm run`.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# tsconfig.build.json also includes scripts/, bench/ and testkit/; they are not in the build
# context (.dockerignore), so only src/ is compiled, to dist/src/.
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json

# ---- runtime: production dependencies and compiled output only ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# package.json must be in /app: the proxy finds its root (and config/default.json) by walking
# up from dist/src/ to the folder holding package.json.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
USER node
EXPOSE 8080 9091
# Slim images have no curl: ask /health with Node's own fetch, on the address the proxy binds
# (HOST; the wildcard 0.0.0.0 or :: is asked on loopback), never a hard-coded one.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const h=process.env.HOST||'0.0.0.0';const a=h==='0.0.0.0'?'127.0.0.1':h==='::'?'[::1]':h.includes(':')?'['+h+']':h;fetch('http://'+a+':'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"]
# Node is PID 1 and handles SIGTERM itself (graceful close in src/main.ts). At start-up main.ts
# re-executes node in place (execve: still PID 1) with heap limits sized from the memory tier
# (heap.maxOldSpaceMiB); a --max-old-space-size in NODE_OPTIONS wins. Memory: docs/deployment.md, "Container memory".
CMD ["node", "dist/src/main.js"]
