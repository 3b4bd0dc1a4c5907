// The dashboard's pages are plain files (no front-end build step): copied
// beside the compiled server, where src/dashboard/server.ts's WEB_ROOT finds
// them in dist/ as it does in src/.
import { cpSync, rmSync } from 'node:fs'

rmSync('dist/dashboard/web', { recursive: true, force: true })
cpSync('src/dashboard/web', 'dist/dashboard/web', { recursive: true })
