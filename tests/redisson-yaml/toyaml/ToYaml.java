import org.redisson.config.Config;

/**
 * Prints Redisson's own Config.toYAML() for a single, cluster or sentinel setup: the files
 * toyaml/<kind>-<version>.yaml (below the two comment lines) are its output. Compile and run
 * it against a Redisson build, e.g. with ../shared/redisson-java:
 *
 *   . ../shared/redisson-java/classpath.sh 4.7.0
 *   javac -d /tmp/toyaml -cp "$JAVA_CP" ToYaml.java
 *   java $JAVA_OPTS_BASE -cp "/tmp/toyaml:$JAVA_CP" ToYaml single
 */
public class ToYaml {
    public static void main(String[] args) throws Exception {
        Config config = new Config();
        switch (args[0]) {
            case "single":
                config.useSingleServer().setAddress("redis://127.0.0.1:6379").setDatabase(2);
                break;
            case "cluster":
                config.useClusterServers().addNodeAddress("redis://127.0.0.1:7000", "redis://127.0.0.1:7001");
                break;
            case "sentinel":
                config.useSentinelServers().setMasterName("mymaster").addSentinelAddress("redis://127.0.0.1:26379");
                break;
            default:
                throw new IllegalArgumentException(args[0]);
        }
        config.setLockWatchdogTimeout(20000);
        System.out.print(config.toYAML());
    }
}
