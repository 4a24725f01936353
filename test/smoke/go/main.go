// Smoke program for the generated Go clients (npm run clients:go).
//
// Against a running server: (1) lists contacts with a Messaging API key, (2) starts a login
// with a Login app key and reads its status, (3) exchanges a Connect authorization code (with
// its PKCE verifier) for tokens and makes one call with the access token. Input comes from the
// environment (see required); prints each step and exits non-zero on the first failure.
//
//	cd test/smoke/go && go run .
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"chatapp.local/clients/connect"
	"chatapp.local/clients/login"
	"chatapp.local/clients/messaging"
)

var required = []string{
	"CHATAPP_BASE_URL", "MESSAGING_API_KEY", "LOGIN_API_KEY", "CONNECT_CLIENT_ID",
	"CONNECT_CLIENT_SECRET", "CONNECT_CODE", "CONNECT_CODE_VERIFIER", "CONNECT_REDIRECT_URI",
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "FAIL "+format+"\n", args...)
	os.Exit(1)
}

// header sets one request header on every call of a client.
func header(name, value string) func(context.Context, *http.Request) error {
	return func(_ context.Context, req *http.Request) error {
		req.Header.Set(name, value)
		return nil
	}
}

// check stops the program unless the call succeeded with the expected status.
func check(step string, err error, res *http.Response, body []byte, want int) {
	if err != nil {
		fail("%s: %v", step, err)
	}
	if res.StatusCode != want {
		fail("%s: HTTP %d %.300s", step, res.StatusCode, body)
	}
}

func main() {
	var missing []string
	for _, name := range required {
		if os.Getenv(name) == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		fail("missing environment: %s", strings.Join(missing, ", "))
	}
	base := os.Getenv("CHATAPP_BASE_URL")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// 1. Messaging: API keys go in X-API-Key.
	mc, err := messaging.NewClientWithResponses(base, messaging.WithRequestEditorFn(header("X-API-Key", os.Getenv("MESSAGING_API_KEY"))))
	if err != nil {
		fail("messaging client: %v", err)
	}
	limit := int32(10)
	contacts, err := mc.ListContactsWithResponse(ctx, &messaging.ListContactsParams{Limit: &limit})
	check("list contacts", err, contacts.HTTPResponse, contacts.Body, 200)
	numbers := make([]string, 0, len(contacts.JSON200.Data))
	for _, c := range contacts.JSON200.Data {
		numbers = append(numbers, c.ContactNo)
	}
	fmt.Printf("messaging: listed %d contact(s): %s\n", len(numbers), strings.Join(numbers, ", "))

	// 2. Login: start a session with the app's key, then read its status.
	lc, err := login.NewClientWithResponses(base, login.WithRequestEditorFn(header("X-API-Key", os.Getenv("LOGIN_API_KEY"))))
	if err != nil {
		fail("login client: %v", err)
	}
	started, err := lc.StartLoginSessionWithResponse(ctx, login.LoginSessionStart{})
	check("start login", err, started.HTTPResponse, started.Body, 201)
	s := started.JSON201
	fmt.Printf("login: started %s (code %s, message %s)\n", s.SessionId, s.LoginCode, s.DisplayPhoneNumber)
	status, err := lc.GetLoginSessionStatusWithResponse(ctx, s.SessionId)
	check("login status", err, status.HTTPResponse, status.Body, 200)
	fmt.Printf("login: session %s is %s, expires %s\n", status.JSON200.SessionId, status.JSON200.Status, status.JSON200.ExpiresAt.Format(time.RFC3339))

	// 3. Connect: the client authenticates with HTTP Basic (RFC 6749 §2.3.1); the code, redirect
	// URI and PKCE verifier go in the form body, as RFC 6749 §4.1.3 has it.
	cc, err := connect.NewClientWithResponses(base, connect.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
		if req.URL.Path == "/api/oauth/token" {
			req.SetBasicAuth(os.Getenv("CONNECT_CLIENT_ID"), os.Getenv("CONNECT_CLIENT_SECRET"))
		}
		return nil
	}))
	if err != nil {
		fail("connect client: %v", err)
	}
	grant := "authorization_code"
	code, verifier, redirect := os.Getenv("CONNECT_CODE"), os.Getenv("CONNECT_CODE_VERIFIER"), os.Getenv("CONNECT_REDIRECT_URI")
	tokens, err := cc.CreateTokenWithFormdataBodyWithResponse(ctx, connect.CreateTokenFormdataRequestBody{GrantType: &grant, Code: &code, CodeVerifier: &verifier, RedirectUri: &redirect})
	check("token exchange", err, tokens.HTTPResponse, tokens.Body, 200)
	t := tokens.JSON200
	fmt.Printf("connect: exchanged the code for %s token (scope %q, workspace %s, expires in %ds)\n", t.TokenType, t.Scope, t.OrgId, t.ExpiresIn)

	bearer := header("Authorization", "Bearer "+t.AccessToken)
	documents, err := cc.ListDocumentsWithResponse(ctx, &connect.ListDocumentsParams{}, bearer)
	check("list documents", err, documents.HTTPResponse, documents.Body, 200)
	fmt.Printf("connect: listed %d document(s) with the access token\n", len(documents.JSON200.Data))
	fmt.Printf("ACCESS_TOKEN_PREFIX=%s\n", t.AccessToken[:4]) // the kind only: never log a token
	fmt.Println("go smoke: OK")
}
