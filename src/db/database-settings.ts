/** Where telesync keeps its data: the settings `openDatabase` takes (config assembles them). */
export interface DatabaseSettings {
  /** PostgreSQL connection string (DATABASE_URL); unset means the embedded database. */
  readonly url: string | undefined;
  /** Directory of the embedded database and its lock file (TELESYNC_DATA_DIR). */
  readonly dataDir: string;
  /** Schema of telesync's tables (TELESYNC_SCHEMA). */
  readonly schema: string;
}
