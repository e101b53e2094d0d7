package io.github.delayq.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every ```java block of docs/clients.md is a region of a file of this
 * package, verbatim: the examples compile with the tests, and
 * DocExamplesIT runs them. A block without its marker fails here.
 */
class DocExamplesTest {
    @Test
    void javaBlocksAreTestedFiles() throws Exception {
        List<DocBlocks.Block> blocks = DocBlocks.blocks(Files.readString(DocBlocks.CLIENTS_MD), "java");
        assertFalse(blocks.isEmpty(), "no java block in docs/clients.md");
        List<String> regions = new ArrayList<>();
        for (DocBlocks.Block b : blocks) {
            String where = "docs/clients.md:" + b.line();
            assertNotNull(b.path(), where + ": java block without <!-- tested: PATH#REGION --> on the line above");
            Path file = DocBlocks.REPO.resolve(b.path());
            assertTrue(Files.isRegularFile(file), where + ": " + b.path() + " does not exist");
            assertEquals(DocBlocks.region(file, b.region()), b.text(),
                    where + " differs from " + b.path() + "#" + b.region() + ": copy the region into the page");
            regions.add(b.region());
        }
        assertEquals(List.of("quickstart", "api", "sasl"), regions);
    }

    @Test
    void blocksAndRegions(@TempDir Path dir) throws Exception {
        String md = "x\n<!-- tested: a/B.java#r -->\n```java\nint a;\n```\n```sh\nls\n```\n```java\nq\n```\n";
        assertEquals(List.of(new DocBlocks.Block(3, "a/B.java", "r", "int a;\n"), new DocBlocks.Block(9, null, null, "q\n")),
                DocBlocks.blocks(md, "java"));
        Path f = dir.resolve("B.java");
        Files.writeString(f, "class B {\n    // doc-begin r\n    int a;\n\n      int b;\n    // doc-end r\n}\n");
        assertEquals("int a;\n\n  int b;\n", DocBlocks.region(f, "r"));
    }

    @Test
    void sendWithYourOwnProducer() {
        MockProducer<String, String> p = new MockProducer<>(true, null, new StringSerializer(), new StringSerializer());
        Quickstart.send(p);
        ProducerRecord<String, String> r = p.history().get(0);
        assertEquals("delay-input", r.topic());
        assertEquals("o-42", r.key());
        assertEquals("o-42", new String(r.headers().lastHeader("delay-id").value(), StandardCharsets.UTF_8));
        assertEquals("orders", new String(r.headers().lastHeader("delay-topic").value(), StandardCharsets.UTF_8));
    }
}
