// Types of gen-command-docs.mjs, for the test that renders the command reference in memory.
export const ROOT: string
export const COMMANDS_DIR: string
export function slug(heading: string): string
/** Every page of docs/commands/, by file name, as `npm run docs:commands` writes them. */
export function renderCommandDocs(): Promise<Map<string, string>>
