// Smoke program of openapi-generator's `java` clients with default options (library okhttp-gson;
// package names only; gate: scripts/gates/openapi-generator.mjs, which runs it with `java -cp
// <the clients' jars and dependencies> Smoke.java`). Against a running server: lists contacts,
// uploads a local image and sends it by its `media_id` (Messaging, X-API-Key), lists Connect
// documents with a bearer token, starts a login session (Login, X-API-Key). Input: the
// environment of typescript-fetch.ts.
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;

public class Smoke {
  static <T> T step(String name, Callable<T> call) {
    try {
      return call.call();
    } catch (Exception error) {
      String detail = error.toString();
      if (error instanceof com.chatapp.messaging.client.ApiException e) detail = "HTTP " + e.getCode() + " " + e.getResponseBody();
      if (error instanceof com.chatapp.connect.client.ApiException e) detail = "HTTP " + e.getCode() + " " + e.getResponseBody();
      if (error instanceof com.chatapp.login.client.ApiException e) detail = "HTTP " + e.getCode() + " " + e.getResponseBody();
      System.err.println("FAIL " + name + ": " + detail.substring(0, Math.min(detail.length(), 400)));
      System.exit(1);
      return null;
    }
  }

  public static void main(String[] args) {
    List<String> missing = new ArrayList<>();
    for (String name : List.of("CHATAPP_BASE_URL", "MESSAGING_API_KEY", "CHATAPP_SENDER", "CHATAPP_CONTACT", "CHATAPP_IMAGE", "CONNECT_ACCESS_TOKEN", "LOGIN_API_KEY")) {
      String value = System.getenv(name);
      if (value == null || value.isEmpty()) missing.add(name);
    }
    if (!missing.isEmpty()) {
      System.err.println("FAIL missing environment: " + String.join(", ", missing));
      System.exit(1);
    }
    String base = System.getenv("CHATAPP_BASE_URL");

    // Messaging API keys go in X-API-Key (the ApiKeyHeader scheme).
    var m = new com.chatapp.messaging.client.ApiClient();
    m.setBasePath(base);
    m.setApiKey(System.getenv("MESSAGING_API_KEY"));
    var contacts = step("list contacts", () -> new com.chatapp.messaging.api.ContactsApi(m).listContacts(10, null, null, null, null, null, null));
    List<String> numbers = new ArrayList<>();
    for (var c : contacts.getData()) numbers.add(c.getContactNo());
    System.out.println("messaging: listed " + contacts.getData().size() + " contact(s): " + String.join(", ", numbers));

    var messages = new com.chatapp.messaging.api.MessagesApi(m);
    File image = new File(System.getenv("CHATAPP_IMAGE"));
    var upload = step("upload media", () -> messages.uploadMedia(System.getenv("CHATAPP_SENDER"), image));
    System.out.println("messaging: uploaded " + image.getName() + " as " + upload.getId() + " (" + upload.getMimeType() + ", " + upload.getSizeBytes() + " bytes)");
    var body = new com.chatapp.messaging.model.SendImageMessage()
      .contactNo(System.getenv("CHATAPP_CONTACT"))
      .chatappPhoneNumber(System.getenv("CHATAPP_SENDER"))
      .messageType(com.chatapp.messaging.model.SendImageMessage.MessageTypeEnum.IMAGE)
      .mediaId(upload.getId())
      .message("A photo from the java client");
    var sent = step("send by media_id", () -> messages.sendMessage(new com.chatapp.messaging.model.SendMessageRequest(body), null));
    System.out.println("messaging: sent " + sent.getId() + " (image, media " + upload.getId() + "), status " + sent.getStatus());

    // Connect: the access token goes in Authorization: Bearer (the ConnectOAuth scheme).
    var c = new com.chatapp.connect.client.ApiClient();
    c.setBasePath(base);
    c.setAccessToken(System.getenv("CONNECT_ACCESS_TOKEN"));
    var documents = step("list documents", () -> new com.chatapp.connect.api.DocumentsApi(c).listDocuments(10, null));
    System.out.println("connect: listed " + documents.getData().size() + " document(s) with the bearer token");

    var l = new com.chatapp.login.client.ApiClient();
    l.setBasePath(base);
    l.setApiKey(System.getenv("LOGIN_API_KEY"));
    var started = step("start login", () -> new com.chatapp.login.api.LoginSessionsApi(l).startLoginSession(new com.chatapp.login.model.LoginSessionStart()));
    System.out.println("login: started " + started.getSessionId() + " (code " + started.getLoginCode() + ")");
    System.out.println("java smoke: OK");
  }
}
