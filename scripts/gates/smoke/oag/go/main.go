// Smoke program of openapi-generator's `go` clients with default options (package names only;
// gate: scripts/gates/openapi-generator.mjs, which writes this module's go.mod pointing at the
// generated modules). Against a running server: lists contacts, uploads a local image and sends
// it by its `media_id` (Messaging, X-API-Key), lists Connect documents with a bearer token,
// starts a login session (Login, X-API-Key). Input: the environment of typescript-fetch.ts.
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	connect "github.com/chatapp/connect-oag"
	login "github.com/chatapp/login-oag"
	messaging "github.com/chatapp/messaging-oag"
)

func check(step string, res *http.Response, err error) {
	if err != nil {
		detail := err.Error()
		if res != nil {
			body, _ := io.ReadAll(res.Body)
			detail = fmt.Sprintf("HTTP %d %.300s", res.StatusCode, body)
		}
		fmt.Fprintf(os.Stderr, "FAIL %s: %s\n", step, detail)
		os.Exit(1)
	}
}

func main() {
	var missing []string
	for _, name := range []string{"CHATAPP_BASE_URL", "MESSAGING_API_KEY", "CHATAPP_SENDER", "CHATAPP_CONTACT", "CHATAPP_IMAGE", "CONNECT_ACCESS_TOKEN", "LOGIN_API_KEY"} {
		if os.Getenv(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL missing environment: %s\n", strings.Join(missing, ", "))
		os.Exit(1)
	}
	base := os.Getenv("CHATAPP_BASE_URL")

	// Messaging API keys go in X-API-Key (the ApiKeyHeader scheme).
	mcfg := messaging.NewConfiguration()
	mcfg.Servers = messaging.ServerConfigurations{{URL: base}}
	m := messaging.NewAPIClient(mcfg)
	ctx := context.WithValue(context.Background(), messaging.ContextAPIKeys, map[string]messaging.APIKey{"ApiKeyHeader": {Key: os.Getenv("MESSAGING_API_KEY")}})
	contacts, res, err := m.ContactsAPI.ListContacts(ctx).Limit(10).Execute()
	check("list contacts", res, err)
	numbers := []string{}
	for _, c := range contacts.Data {
		numbers = append(numbers, c.ContactNo)
	}
	fmt.Printf("messaging: listed %d contact(s): %s\n", len(contacts.Data), strings.Join(numbers, ", "))

	image := os.Getenv("CHATAPP_IMAGE")
	file, err := os.Open(image)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL open image: %v\n", err)
		os.Exit(1)
	}
	upload, res, err := m.MessagesAPI.UploadMedia(ctx).ChatappPhoneNumber(os.Getenv("CHATAPP_SENDER")).File(file).Execute()
	check("upload media", res, err)
	fmt.Printf("messaging: uploaded %s as %s (%s, %d bytes)\n", filepath.Base(image), upload.Id, upload.MimeType, upload.SizeBytes)
	body := messaging.NewSendImageMessage(os.Getenv("CHATAPP_CONTACT"), os.Getenv("CHATAPP_SENDER"), "image")
	body.SetMediaId(upload.Id)
	body.SetMessage("A photo from the go client")
	sent, res, err := m.MessagesAPI.SendMessage(ctx).SendMessageRequest(messaging.SendImageMessageAsSendMessageRequest(body)).Execute()
	check("send by media_id", res, err)
	fmt.Printf("messaging: sent %s (image, media %s), status %s\n", sent.Id, upload.Id, sent.Status)

	// Connect: the access token goes in Authorization: Bearer (the ConnectOAuth scheme).
	ccfg := connect.NewConfiguration()
	ccfg.Servers = connect.ServerConfigurations{{URL: base}}
	cctx := context.WithValue(context.Background(), connect.ContextAccessToken, os.Getenv("CONNECT_ACCESS_TOKEN"))
	documents, res, err := connect.NewAPIClient(ccfg).DocumentsAPI.ListDocuments(cctx).Limit(10).Execute()
	check("list documents", res, err)
	fmt.Printf("connect: listed %d document(s) with the bearer token\n", len(documents.Data))

	lcfg := login.NewConfiguration()
	lcfg.Servers = login.ServerConfigurations{{URL: base}}
	lctx := context.WithValue(context.Background(), login.ContextAPIKeys, map[string]login.APIKey{"ApiKeyHeader": {Key: os.Getenv("LOGIN_API_KEY")}})
	started, res, err := login.NewAPIClient(lcfg).LoginSessionsAPI.StartLoginSession(lctx).LoginSessionStart(*login.NewLoginSessionStart()).Execute()
	check("start login", res, err)
	fmt.Printf("login: started %s (code %s)\n", started.SessionId, started.LoginCode)
	fmt.Println("go smoke: OK")
}
