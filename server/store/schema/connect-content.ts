// Row types of the connect-content tables (see its migration).
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface ConnectContentTables {}
