// TypeSpec cannot attach examples to multipart bodies, so the contract suite builds those
// requests from this table: the text parts and one small file, valid for each operation.
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

export const MULTIPART_BODIES: Record<string, { fields: Record<string, string>; file: { name: string; type: string; bytes: Buffer } }> = {
  uploadDocument: { fields: { title: 'Autumn brochure' }, file: { name: 'brochure.pdf', type: 'application/pdf', bytes: PDF } },
  uploadMedia: { fields: { chatapp_phone_number: '+14155550100' }, file: { name: 'photo.png', type: 'image/png', bytes: PNG } },
  createContactImport: {
    fields: {},
    file: { name: 'contacts.csv', type: 'text/csv', bytes: Buffer.from('contact_no,name\r\n+4915112340001,Lena\r\n') },
  },
  uploadDocumentVersion: { fields: {}, file: { name: 'brochure-v2.pdf', type: 'application/pdf', bytes: PDF } },
  sendMessage: {
    fields: { contact_no: '+14155550123', chatapp_phone_number: '+14155550100', messageType: 'image', message: 'Your photo' },
    file: { name: 'photo.png', type: 'image/png', bytes: PNG },
  },
};

/**
 * Path values of multipart operations' examples, by example title: TypeSpec cannot give an
 * example's parameters without its body, which a multipart body cannot be.
 */
export const MULTIPART_PATHS: Record<string, Record<string, Record<string, string>>> = {
  uploadDocumentVersion: { uploaded: { documentId: 'doc_9KfQ2x7LmT4vP1sZ' }, not_found: { documentId: 'doc_0000000000000000' } },
};

export function multipartBody(operationId: string): FormData {
  const spec = MULTIPART_BODIES[operationId];
  if (!spec) throw new Error(`no multipart body for ${operationId}: add one to test/contract/multipart.ts`);
  const form = new FormData();
  for (const [k, v] of Object.entries(spec.fields)) form.append(k, v);
  form.append('file', new Blob([new Uint8Array(spec.file.bytes)], { type: spec.file.type }), spec.file.name);
  return form;
}
