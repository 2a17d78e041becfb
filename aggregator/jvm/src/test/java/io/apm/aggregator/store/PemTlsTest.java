package io.apm.aggregator.store;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * PemTls, the executors' Cassandra TLS context, in real handshakes over loopback: a CA and
 * certificates made here with openssl (as tests/support/certs.py), a client trusting the CA
 * accepted with the host name checked, one trusting another CA refused, a client certificate
 * presented to a server that requires one, and a key that is not PKCS#8 named in the error.
 */
class PemTlsTest {
  @TempDir static Path dir;

  static void openssl(String... args) throws IOException, InterruptedException {
    List<String> command = new java.util.ArrayList<>(List.of("openssl"));
    command.addAll(List.of(args));
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertTrue(p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0, out);
  }

  static void ca(String name) throws Exception {
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", name + ".key", "-out", name + ".pem", "-days", "2", "-subj", "/CN=test " + name);
  }

  static void issue(String ca, String name) throws Exception {
    Files.writeString(dir.resolve(name + ".ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=localhost");
    openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
        "-CAcreateserial", "-days", "2", "-out", name + ".pem", "-extfile", name + ".ext");
  }

  static String file(String name) {
    return dir.resolve(name).toString();
  }

  @BeforeAll
  static void certificates() throws Exception {
    ca("ca");
    ca("other");
    issue("ca", "node");
    issue("ca", "client");
    openssl("ec", "-in", "client.key", "-out", "client-sec1.key"); // "BEGIN EC PRIVATE KEY"
  }

  /** Serves one handshake with {@code server}; the client's result, the server's failure. */
  static String handshake(SSLContext server, boolean needClientCert, SSLContext client)
      throws Exception {
    InetAddress loopback = InetAddress.getByName("127.0.0.1");
    try (SSLServerSocket listener =
        (SSLServerSocket) server.getServerSocketFactory().createServerSocket(0, 1, loopback)) {
      listener.setNeedClientAuth(needClientCert);
      CompletableFuture<Void> served =
          CompletableFuture.runAsync(
              () -> {
                try (SSLSocket s = (SSLSocket) listener.accept()) {
                  s.startHandshake();
                  s.getOutputStream().write(1);
                } catch (IOException e) {
                  // the client's side says why
                }
              });
      try (SSLSocket socket =
          (SSLSocket) client.getSocketFactory().createSocket(loopback, listener.getLocalPort())) {
        SSLParameters params = socket.getSSLParameters();
        params.setEndpointIdentificationAlgorithm("HTTPS"); // as the driver with host checks
        socket.setSSLParameters(params);
        socket.startHandshake();
        int got = socket.getInputStream().read();
        served.get(10, TimeUnit.SECONDS);
        return got == 1 ? "ok" : "closed";
      }
    }
  }

  @Test
  void aClientTrustingTheCaIsAcceptedAndAnotherCaRefused() throws Exception {
    SSLContext node = PemTls.context(null, file("node.pem"), file("node.key"));
    assertEquals("ok", handshake(node, false, PemTls.context(file("ca.pem"), null, null)));
    SSLContext wrong = PemTls.context(file("other.pem"), null, null);
    assertThrows(SSLHandshakeException.class, () -> handshake(node, false, wrong));
  }

  @Test
  void aClientCertificateIsPresented() throws Exception {
    SSLContext node = PemTls.context(file("ca.pem"), file("node.pem"), file("node.key"));
    SSLContext client = PemTls.context(file("ca.pem"), file("client.pem"), file("client.key"));
    assertEquals("ok", handshake(node, true, client));
    SSLContext none = PemTls.context(file("ca.pem"), null, null);
    assertThrows(IOException.class, () -> handshake(node, true, none));
  }

  @Test
  void badFilesAreNamed() {
    IllegalArgumentException sec1 =
        assertThrows(
            IllegalArgumentException.class,
            () -> PemTls.context(file("ca.pem"), file("client.pem"), file("client-sec1.key")));
    assertTrue(sec1.getMessage().contains("client-sec1.key: not a PKCS#8 PEM key"), sec1.getMessage());
    IllegalArgumentException missing =
        assertThrows(IllegalArgumentException.class, () -> PemTls.context(file("nope.pem"), null, null));
    assertTrue(missing.getMessage().contains("nope.pem"), missing.getMessage());
  }
}
