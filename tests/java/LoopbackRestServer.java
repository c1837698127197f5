// Iceberg Java's REST catalog test server (RESTCatalogAdapter + RESTCatalogServlet over a
// JdbcCatalog), bound to 127.0.0.1 only. Iceberg's own RESTCatalogServer listens on every
// interface; this launcher differs in the address, and in planning every scan a client asks
// it to plan asynchronously, ten file scan tasks per plan task (so that clients poll and
// fetch plan tasks). Usage:
//   java -cp <classpath> LoopbackRestServer <port> <warehouse-uri> <jdbc-uri>
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.CatalogProperties;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Scan;
import org.apache.iceberg.catalog.Catalog;
import org.apache.iceberg.rest.RESTCatalogAdapter;
import org.apache.iceberg.rest.RESTCatalogServlet;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class LoopbackRestServer {
  public static void main(String[] args) throws Exception {
    Map<String, String> props = new HashMap<>();
    props.put(CatalogProperties.CATALOG_IMPL, "org.apache.iceberg.jdbc.JdbcCatalog");
    props.put(CatalogProperties.WAREHOUSE_LOCATION, args[1]);
    props.put(CatalogProperties.URI, args[2]);
    props.put("jdbc.schema-version", "V1");
    props.put("jdbc.user", "user");
    props.put("jdbc.password", "password");
    Catalog catalog = CatalogUtil.buildIcebergCatalog("rest_backend", props, new Configuration());
    ServletContextHandler context = new ServletContextHandler(ServletContextHandler.NO_SESSIONS);
    RESTCatalogAdapter adapter =
        new RESTCatalogAdapter(catalog) {
          @Override
          protected PlanningBehavior planningBehavior() {
            return new PlanningBehavior() {
              @Override
              public int numberFileScanTasksPerPlanTask() {
                return 10;
              }

              @Override
              public boolean shouldPlanTableScanAsync(Scan<?, FileScanTask, ?> scan) {
                return true;
              }
            };
          }
        };
    context.addServlet(new ServletHolder(new RESTCatalogServlet(adapter)), "/*");
    Server server = new Server();
    ServerConnector connector = new ServerConnector(server);
    connector.setHost("127.0.0.1");
    connector.setPort(Integer.parseInt(args[0]));
    server.addConnector(connector);
    server.setHandler(context);
    server.start();
    server.join();
  }
}
