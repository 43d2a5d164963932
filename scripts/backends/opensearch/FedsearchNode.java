// The node launcher of scripts/backends/opensearch.sh, run in Java's source-file mode
// (`java -cp <runner jars> FedsearchNode.java -httpPort P -transportPort T <runner args>`).
//
// The codelibs runner's own main() cannot start a node on an HTTP port above its maxHttpPort
// (9299 by default, no command-line flag) and swallows the start-up exception (it exits 1 after
// logging "Closed all nodes."). This launcher drives the same runner through its Java API: it
// lifts maxHttpPort to the requested port, pins transport.port to the given port, and prints the
// whole cause chain of a failed start on stderr as lines starting with "FEDSEARCH-START-FAILED:",
// which the script shows.
import org.codelibs.opensearch.runner.OpenSearchRunner;

import java.util.ArrayList;
import java.util.List;

public class FedsearchNode {
    public static void main(String[] argv) {
        int httpPort = -1;
        String transportPort = null;
        List<String> rest = new ArrayList<>();
        for (int i = 0; i < argv.length; i++) {
            if ("-httpPort".equals(argv[i]) && i + 1 < argv.length) {
                httpPort = Integer.parseInt(argv[++i]);
            } else if ("-transportPort".equals(argv[i]) && i + 1 < argv.length) {
                transportPort = argv[++i];
            } else {
                rest.add(argv[i]);
            }
        }
        if (httpPort < 1 || httpPort > 65535 || transportPort == null) {
            System.err.println("FEDSEARCH-START-FAILED: usage: FedsearchNode -httpPort P -transportPort T <runner args>");
            System.exit(2);
        }
        final OpenSearchRunner runner = new OpenSearchRunner();
        // node k listens on baseHttpPort + k; one node on httpPort needs baseHttpPort = httpPort - 1
        rest.add("-baseHttpPort");
        rest.add(Integer.toString(httpPort - 1));
        runner.setMaxHttpPort(httpPort);
        final String transport = transportPort;
        runner.onBuild((index, settings) -> settings.put("transport.port", transport));
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                runner.close();
            } catch (Exception e) {
                // the JVM is going away; nothing left to report to
            }
        }));
        try {
            runner.build(rest.toArray(new String[0]));
        } catch (Throwable t) {
            for (Throwable c = t; c != null; c = c.getCause()) {
                System.err.println("FEDSEARCH-START-FAILED: " + c);
                if (c.getCause() == c) break;
            }
            try {
                runner.close();
            } catch (Exception e) {
                // already failing
            }
            System.exit(1);
        }
        while (!runner.isClosed()) {
            try {
                Thread.sleep(5000);
            } catch (InterruptedException e) {
                break;
            }
        }
    }
}
