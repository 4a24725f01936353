// The columns migration 016 adds to 010's uploaded_media, merged into its row type.
import type { ColumnType } from 'kysely';

type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;

declare module './messaging-inbox.js' {
  interface UploadedMediaTable {
    /** SHA-256 of the bytes, hex; null for rows written before 016. */
    sha256: ColumnType<string | null, string | null | undefined, string | null>;
    /** When the provider forgets the media; null for rows written before 016. */
    expires_at: NullableTimestamp;
  }
}
