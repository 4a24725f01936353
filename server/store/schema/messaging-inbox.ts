// Row types of the messaging-inbox tables (see its migration).
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface MessagingInboxTables {}
