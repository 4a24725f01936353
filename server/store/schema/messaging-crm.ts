// Row types of the messaging-crm tables (see its migration).
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface MessagingCrmTables {}
