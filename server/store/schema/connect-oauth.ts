// Row types of the connect-oauth tables (see its migration).
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ConnectOAuthTables {}
