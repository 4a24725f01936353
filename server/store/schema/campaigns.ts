// Row types of the campaigns tables (see its migration).
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface CampaignTables {}
