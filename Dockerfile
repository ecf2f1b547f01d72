# stacks-cache-proxy container image.
#   docker build -t stacks-cache-proxy .
#   docker run -p 8080:8080 -e UPSTREAM_URLS=https://api.hiro.so stacks-cache-proxy
# Settings come from the environment (PORT, HOST, UPSTREAM_URLS, REDIS_URL, LOG_LEVEL, CONFIG_FILE);
# see README.md "Settings". docker-compose.yml runs it with Redis, Prometheus and Grafana.
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: compile TypeScript (dev dependencies needed) ----
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
# tsconfig.build.json also includes scripts/, bench/ and testkit/; they are not in the build
# context (.dockerignore), so only src/ is compiled, to dist/src/.
RUN npm run build

# ---- runtime: production dependencies and compiled output only ----
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# package.json must be in /app: the proxy finds its root (and config/default.json) by walking
# up from dist/src/ to the folder holding package.json.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY config ./config
USER node
EXPOSE 8080 9091
# Slim images have no curl: ask /health with Node's own fetch.
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"]
# Node is PID 1 and handles SIGTERM itself (graceful close in src/main.ts). At start-up main.ts
# re-executes node in place (execve: still PID 1) with heap limits sized from the memory tier
# (heap.maxOldSpaceMiB); a --max-old-space-size in NODE_OPTIONS wins. Memory: README "Deployment".
CMD ["node", "dist/src/main.js"]
