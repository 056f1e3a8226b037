# telesync, compiled, for docker compose and other container platforms.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The sources are not here yet: install first, build once they are.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
COPY migrations ./migrations
# The image's own Node 24 builds (the `node` development dependency, left uninstalled by
# --ignore-scripts, is for machines whose Node is older).
RUN node bin/build.js && npm prune --omit=dev

FROM node:24-bookworm-slim
ENV NODE_ENV=production
# A young generation of 2 × 32 MB instead of 2 × 16: with many accounts at once, fewer of a page's
# short-lived objects outlive a collection (about a tenth less CPU in telesync for fifty accounts,
# docs/scaling.md "A larger young generation"). Node reads it only at start, hence here.
ENV NODE_OPTIONS=--max-semi-space-size=32
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# `telesync` on the PATH, as after `npm install`: `docker compose exec telesync telesync status`.
RUN printf '#!/bin/sh\nexec node /app/dist/src/cli/entry.js "$@"\n' > /usr/local/bin/telesync \
 && chmod 755 /usr/local/bin/telesync
USER node
ENTRYPOINT ["telesync"]
CMD ["--help"]
