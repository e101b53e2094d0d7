package io.github.delayq.examples;

// The HTTP API example of docs/clients.md: the page holds the lines
// between doc-begin and doc-end verbatim (DocExamplesTest), DocExamplesIT
// runs it.
// doc-begin api
import io.github.delayq.ApiClient;
import io.github.delayq.ApiException;
import io.github.delayq.Receipt;
import io.github.delayq.Task;
import java.time.Duration;
import java.util.Map;

public class ApiQuickstart {
    public static void main(String[] args) throws InterruptedException {
        String url = args.length > 0 ? args[0] : "http://127.0.0.1:8080";  // delayd --roles …,api
        ApiClient api = ApiClient.builder().url(url)
                .token(System.getenv("DELAYQ_API_TOKEN")).build();        // no token sent when unset
        Receipt r = api.submit(Task.to("orders").id("o-42").after(Duration.ofMinutes(30)).value("remind"));
        System.out.println(r.id() + " due " + r.at() + " via " + r.input());
        for (int i = 0; ; i++) {                       // NotFound (404) until ingest stored it
            try {
                System.out.println(api.get("o-42"));  // {id=o-42, state=pending, at=…, at_ms=…}
                break;
            } catch (ApiException.NotFound e) {
                if (i == 100) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
        api.reschedule("o-42", Duration.ofHours(1));
        api.replace(Task.to("orders").id("o-42").after(Duration.ofHours(2)).value("remind again"));
        api.cancel("o-42");                            // cancel by id
        try {
            api.submit(Task.to("orders").id("o-42").after(Duration.ofSeconds(5)));
        } catch (ApiException.IdCancelled e) {         // 409 once the cancel is stored
            System.out.println(e.status() + " " + e.reason());   // … blocked until 2027-01-04T10:34:18Z …
        }
        System.out.println(api.list(Map.of("topic", "orders", "from", "now", "limit", 100)));
    }
}
// doc-end api
