// STORAGE_URL's shape, without the SDK (config.ts checks it at start; the S3 client loads only when used).

export interface ParsedStorageUrl {
  bucket: string;
  prefix: string;
  endpoint?: string;
  region?: string;
  forcePathStyle?: boolean;
}

/** `s3://bucket/prefix?…` → its parts; a message for config.ts when it is not one. */
export function parseStorageUrl(text: string): ParsedStorageUrl | string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `STORAGE_URL must be s3://bucket/prefix, got "${text}"`;
  }
  if (url.protocol !== 's3:' || !url.hostname) return `STORAGE_URL must be s3://bucket/prefix, got "${text}"`;
  if (url.username || url.password) return 'STORAGE_URL must not carry credentials: use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY';
  const prefix = decodeURIComponent(url.pathname).replace(/^\/+/, '').replace(/\/*$/, '');
  const q = url.searchParams;
  for (const name of q.keys())
    if (!['endpoint', 'region', 'path_style'].includes(name)) return `STORAGE_URL: unknown option "${name}" (endpoint, region, path_style)`;
  const pathStyle = q.get('path_style');
  if (pathStyle !== null && !['true', 'false'].includes(pathStyle)) return 'STORAGE_URL: path_style must be true or false';
  return {
    bucket: url.hostname,
    prefix: prefix ? `${prefix}/` : '',
    endpoint: q.get('endpoint') ?? undefined,
    region: q.get('region') ?? undefined,
    forcePathStyle: pathStyle === null ? undefined : pathStyle === 'true',
  };
}
