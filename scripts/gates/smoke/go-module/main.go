// Smoke program of the Go client module zip (.artifacts/clients/go-proxy, built by
// `npm run clients:pack`), run by scripts/gates/client-artifacts.mjs in a clean module that
// requires chatapp.local/clients from that GOPROXY folder. Against a running server: lists
// contacts, uploads a local image (POST /api/chatapp/media), then sends it by its `media_id`.
// Input from the environment: CHATAPP_BASE_URL, MESSAGING_API_KEY, CHATAPP_SENDER,
// CHATAPP_CONTACT, CHATAPP_IMAGE. Exits non-zero naming the step on a failure.
package main

import (
	"bytes"
	"context"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"

	"chatapp.local/clients/messaging"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "FAIL "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	var missing []string
	for _, name := range []string{"CHATAPP_BASE_URL", "MESSAGING_API_KEY", "CHATAPP_SENDER", "CHATAPP_CONTACT", "CHATAPP_IMAGE"} {
		if os.Getenv(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		fail("missing environment: %s", strings.Join(missing, ", "))
	}
	ctx := context.Background()
	key := os.Getenv("MESSAGING_API_KEY")
	sender := os.Getenv("CHATAPP_SENDER")
	c, err := messaging.NewClientWithResponses(os.Getenv("CHATAPP_BASE_URL"),
		messaging.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("X-API-Key", key) // Messaging API keys go in X-API-Key
			return nil
		}))
	if err != nil {
		fail("client: %v", err)
	}

	limit := int32(10)
	contacts, err := c.ListContactsWithResponse(ctx, &messaging.ListContactsParams{Limit: &limit})
	if err != nil || contacts.JSON200 == nil {
		fail("list contacts: %v %d %s", err, status(contacts.HTTPResponse), body(contacts.Body))
	}
	numbers := []string{}
	for _, contact := range contacts.JSON200.Data {
		numbers = append(numbers, contact.ContactNo)
	}
	fmt.Printf("messaging: listed %d contact(s): %s\n", len(numbers), strings.Join(numbers, ", "))

	// uploadMedia: the multipart form, built with the standard library.
	path := os.Getenv("CHATAPP_IMAGE")
	image, err := os.ReadFile(path)
	if err != nil {
		fail("read %s: %v", path, err)
	}
	var form bytes.Buffer
	w := multipart.NewWriter(&form)
	_ = w.WriteField("chatapp_phone_number", sender)
	header := textproto.MIMEHeader{}
	header.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, filepath.Base(path)))
	header.Set("Content-Type", "image/png")
	part, _ := w.CreatePart(header)
	_, _ = part.Write(image)
	_ = w.Close()
	upload, err := c.UploadMediaWithBodyWithResponse(ctx, w.FormDataContentType(), &form)
	if err != nil || upload.JSON201 == nil {
		fail("upload media: %v %d %s", err, status(upload.HTTPResponse), body(upload.Body))
	}
	fmt.Printf("messaging: uploaded %s as %s (%s, %d bytes)\n", filepath.Base(path), upload.JSON201.Id, upload.JSON201.MimeType, upload.JSON201.SizeBytes)

	// sendMessage: JSON naming the upload's media_id.
	caption := "A photo from the Go module"
	mediaID := upload.JSON201.Id
	var request messaging.SendMessageRequest
	if err := request.FromSendImageMessage(messaging.SendImageMessage{
		MessageType:        messaging.SendImageMessageMessageTypeImage,
		ContactNo:          os.Getenv("CHATAPP_CONTACT"),
		ChatappPhoneNumber: sender,
		MediaId:            &mediaID,
		Message:            &caption,
	}); err != nil {
		fail("build the send: %v", err)
	}
	sent, err := c.SendMessageWithResponse(ctx, &messaging.SendMessageParams{}, request)
	if err != nil || sent.JSON201 == nil {
		fail("send by media_id: %v %d %s", err, status(sent.HTTPResponse), body(sent.Body))
	}
	fmt.Printf("messaging: sent %s (image, media %s), status %s\n", sent.JSON201.Id, mediaID, sent.JSON201.Status)
	fmt.Println("go module smoke: OK")
}

func status(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

func body(b []byte) string {
	if len(b) > 300 {
		return string(b[:300])
	}
	return string(b)
}
