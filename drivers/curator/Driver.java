// lockbench driver for Apache Curator's InterProcessMutex: protocol 1 (docs/book/src/drivers.md).
// One CuratorFramework (one ZooKeeper session) a client, and one thread a client: Curator's
// mutex belongs to the thread that took it, so a client's acquire, writes and release run on
// its own thread, in order.

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;

public final class Driver {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final List<CuratorFramework> clients = new ArrayList<>();
    private final List<ExecutorService> threads = new ArrayList<>();
    /** (client, key) of each mutex held. */
    private final Map<String, InterProcessMutex> held = new ConcurrentHashMap<>();
    /** (client, key) of each held mutex whose session was reported LOST. */
    private final Set<String> lost = ConcurrentHashMap.newKeySet();
    private final List<ConnectionState> states = new ArrayList<>();
    private boolean check = true;

    private static synchronized void send(ObjectNode o) {
        System.out.println(o.toString());
        System.out.flush();
    }

    private static ObjectNode answer(long id, String outcome, String error) {
        ObjectNode o = JSON.createObjectNode();
        o.put("id", id);
        o.put("outcome", outcome);
        if (error != null) {
            o.put("error", error);
        }
        return o;
    }

    private static String slot(int client, String key) {
        return client + " " + key;
    }

    private void connect(JsonNode hello) throws Exception {
        StringBuilder hosts = new StringBuilder();
        for (JsonNode e : hello.get("cluster").get("endpoints")) {
            hosts.append(hosts.length() == 0 ? "" : ",").append(e.asText());
        }
        int ttl = hello.get("lease_ttl_ms").asInt();
        JsonNode settings = hello.get("settings");
        check = settings == null || !settings.has("check_lost") || settings.get("check_lost").asBoolean();
        int n = hello.get("clients").asInt();
        for (int c = 0; c < n; c++) {
            CuratorFramework cf = CuratorFrameworkFactory.builder()
                    .connectString(hosts.toString())
                    .sessionTimeoutMs(ttl)
                    .connectionTimeoutMs(Math.min(ttl, 15000))
                    .retryPolicy(new ExponentialBackoffRetry(100, 10, 2000))
                    .build();
            final int client = c;
            states.add(ConnectionState.CONNECTED);
            cf.getConnectionStateListenable().addListener((f, state) -> onState(client, state));
            cf.start();
            if (!cf.blockUntilConnected(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no connection to " + hosts + " in 30 s");
            }
            clients.add(cf);
            threads.add(Executors.newSingleThreadExecutor());
        }
    }

    private void onState(int client, ConnectionState state) {
        synchronized (states) {
            states.set(client, state);
        }
        if (state != ConnectionState.LOST) {
            return;
        }
        String prefix = client + " ";
        for (String s : held.keySet()) {
            if (s.startsWith(prefix) && lost.add(s)) {
                ObjectNode o = JSON.createObjectNode();
                o.put("event", "lease_lost");
                o.put("client", client);
                o.put("key", s.substring(prefix.length()));
                o.put("why", "connection state LOST");
                send(o);
            }
        }
    }

    private ConnectionState state(int client) {
        synchronized (states) {
            return states.get(client);
        }
    }

    private void handle(JsonNode req) {
        long id = req.get("id").asLong();
        String op = req.get("op").asText();
        int client = req.get("client").asInt();
        String key = req.get("key").asText();
        String s = slot(client, key);
        try {
            switch (op) {
                case "acquire": {
                    InterProcessMutex m = new InterProcessMutex(clients.get(client), key);
                    if (m.acquire(req.get("timeout_ms").asLong(), TimeUnit.MILLISECONDS)) {
                        lost.remove(s);
                        held.put(s, m);
                        send(answer(id, "ok", null));
                    } else {
                        send(answer(id, "fail", "timed out"));
                    }
                    break;
                }
                case "release": {
                    InterProcessMutex m = held.remove(s);
                    boolean wasLost = lost.remove(s);
                    if (m == null) {
                        send(answer(id, "fail", "not held"));
                        break;
                    }
                    m.release();
                    send(wasLost ? answer(id, "fail", "the session that held it was LOST") : answer(id, "ok", null));
                    break;
                }
                case "write": {
                    ConnectionState st = state(client);
                    if (check && lost.contains(s)) {
                        send(answer(id, "fail", "lock lost: connection state LOST"));
                    } else if (check && st != ConnectionState.CONNECTED && st != ConnectionState.RECONNECTED) {
                        send(answer(id, "fail", "connection state " + st + ": the lock may be lost"));
                    } else {
                        send(answer(id, "ok", null));
                    }
                    break;
                }
                case "read":
                    send(answer(id, "ok", null));
                    break;
                default:
                    send(answer(id, "fail", "unknown op " + op));
            }
        } catch (Exception e) {
            e.printStackTrace();
            send(answer(id, "info", e.getClass().getSimpleName() + ": " + e.getMessage()));
        }
    }

    /** The version Curator's jar was built as (its Maven pom.properties). */
    private static String curatorVersion() {
        java.util.Properties p = new java.util.Properties();
        try (java.io.InputStream in = CuratorFramework.class.getResourceAsStream(
                "/META-INF/maven/org.apache.curator/curator-framework/pom.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (java.io.IOException e) {
            return null;
        }
        return p.getProperty("version");
    }

    public static void main(String[] args) throws Exception {
        Driver d = new Driver();
        String version = curatorVersion();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            JsonNode req = JSON.readTree(line);
            long id = req.get("id").asLong();
            String op = req.get("op").asText();
            if (op.equals("hello")) {
                try {
                    d.connect(req);
                    ObjectNode o = answer(id, "ok", null);
                    o.put("protocol", 1);
                    o.put("version", version == null ? "unknown" : version);
                    send(o);
                } catch (Exception e) {
                    e.printStackTrace();
                    send(answer(id, "fail", "connect: " + e));
                }
            } else if (op.equals("ping")) {
                send(answer(id, "ok", null));
            } else {
                d.threads.get(req.get("client").asInt()).execute(() -> d.handle(req));
            }
        }
        for (ExecutorService t : d.threads) {
            t.shutdownNow();
        }
        for (CuratorFramework cf : d.clients) {
            cf.close();
        }
        System.exit(0);
    }
}
