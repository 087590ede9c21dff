// Real Redisson's conditional expiry and expire time on RSemaphore and
// RPermitExpirableSemaphore, which the driver in ../shared/redisson-java has no verbs for
// (tests/java/expiry.rs compiles this against each version's jars and runs it, through
// JavaClient::start_probe in tests/support/real_java.rs: the drivers' line protocol).
//
// usage: java -cp <redisson jars> ExpiryProbe <redis-url>
// Prints READY ExpiryProbe, then answers one command a line (blank lines are skipped):
//   <sem|pes> <name> <ifset|ifnotset|ifgreater|ifless> <ttlMs>   the Duration form: true|false
//   <sem|pes> <name> <ifsetat|ifnotsetat|ifgreaterat|iflessat> <epochMs>
//                                                                the Instant form: true|false
//   <sem|pes> <name> expiretime                                  getExpireTime(): a number
// A Redisson exception answers `ERR <class>: <message>`.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;

import org.redisson.Redisson;
import org.redisson.api.RExpirable;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

public final class ExpiryProbe {
    private ExpiryProbe() {
    }

    public static void main(String[] args) throws Exception {
        Config config = new Config();
        config.setCodec(StringCodec.INSTANCE);
        config.useSingleServer().setAddress(args[0]);
        RedissonClient redisson = Redisson.create(config);
        try {
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            System.out.println("READY ExpiryProbe");
            System.out.flush();
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                String[] words = line.trim().split("\\s+");
                if (words.length < 3) {
                    continue;
                }
                String answer;
                try {
                    answer = answer(redisson, words);
                } catch (RuntimeException e) {
                    answer = "ERR " + e.getClass().getName() + ": " + e.getMessage();
                }
                System.out.println(answer);
                System.out.flush();
            }
        } finally {
            redisson.shutdown();
        }
    }

    private static String answer(RedissonClient redisson, String[] words) {
        RExpirable object;
        if (words[0].equals("sem")) {
            object = redisson.getSemaphore(words[1]);
        } else if (words[0].equals("pes")) {
            object = redisson.getPermitExpirableSemaphore(words[1]);
        } else {
            return "ERR unknown kind " + words[0];
        }
        String verb = words[2];
        if (verb.equals("expiretime")) {
            return Long.toString(object.getExpireTime());
        }
        long ms = Long.parseLong(words[3]);
        boolean at = verb.endsWith("at");
        Duration ttl = Duration.ofMillis(ms);
        Instant instant = Instant.ofEpochMilli(ms);
        switch (at ? verb.substring(0, verb.length() - 2) : verb) {
            case "ifset":
                return Boolean.toString(at ? object.expireIfSet(instant) : object.expireIfSet(ttl));
            case "ifnotset":
                return Boolean.toString(at ? object.expireIfNotSet(instant) : object.expireIfNotSet(ttl));
            case "ifgreater":
                return Boolean.toString(at ? object.expireIfGreater(instant) : object.expireIfGreater(ttl));
            case "ifless":
                return Boolean.toString(at ? object.expireIfLess(instant) : object.expireIfLess(ttl));
            default:
                return "ERR unknown verb " + verb;
        }
    }
}
