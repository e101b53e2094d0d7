package io.github.delayq.examples;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The fenced code blocks of a Markdown page and the file regions they
 * must equal: a block carries {@code <!-- tested: PATH#NAME -->} (or
 * {@code PATH}: the whole file) on the line above its fence; the region
 * NAME is the lines between those ending in {@code doc-begin NAME} and
 * {@code doc-end NAME}, dedented.
 */
final class DocBlocks {
    static final Path REPO = Path.of("").toAbsolutePath().resolve("../..").normalize();
    static final Path CLIENTS_MD = REPO.resolve("docs/clients.md");

    private static final Pattern MARK = Pattern.compile("^<!-- tested: (\\S+?)(?:#(\\S+))? -->$");
    private static final Pattern FENCE = Pattern.compile("^```(\\w*)\\s*$");

    private DocBlocks() {}

    /** A block: its line (1-based), its marker's path and region (null when unmarked), its text. */
    record Block(int line, String path, String region, String text) {}

    static List<Block> blocks(String markdown, String lang) {
        List<String> lines = Arrays.asList(markdown.split("\n", -1));
        List<Block> out = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            Matcher f = FENCE.matcher(lines.get(i));
            if (!f.matches() || f.group(1).isEmpty()) {
                continue;
            }
            int end = i + 1;
            while (end < lines.size() && !lines.get(end).strip().equals("```")) {
                end++;
            }
            if (f.group(1).equals(lang)) {
                Matcher m = i > 0 ? MARK.matcher(lines.get(i - 1).strip()) : null;
                boolean marked = m != null && m.matches();
                out.add(new Block(i + 1, marked ? m.group(1) : null, marked ? m.group(2) : null,
                        String.join("\n", lines.subList(i + 1, Math.min(end, lines.size()))) + "\n"));
            }
            i = end;
        }
        return out;
    }

    /** The file's text, or its region name dedented. */
    static String region(Path file, String name) throws IOException {
        String text = Files.readString(file);
        if (name == null) {
            return text;
        }
        List<String> lines = Arrays.asList(text.split("\n", -1));
        int begin = -1;
        int end = -1;
        for (int i = 0; i < lines.size(); i++) {
            String l = lines.get(i).stripTrailing();
            if (l.endsWith("doc-begin " + name)) {
                if (begin >= 0) {
                    throw new IllegalStateException(file + ": doc-begin " + name + " twice");
                }
                begin = i;
            } else if (l.endsWith("doc-end " + name) && end < 0) {
                end = i;
            }
        }
        if (begin < 0 || end < begin) {
            throw new IllegalStateException(file + ": no doc-begin/doc-end " + name);
        }
        List<String> r = lines.subList(begin + 1, end);
        int indent = r.stream().filter(l -> !l.isBlank()).mapToInt(l -> l.length() - l.stripLeading().length())
                .min().orElse(0);
        StringBuilder b = new StringBuilder();
        for (String l : r) {
            b.append(l.isBlank() ? "" : l.substring(indent)).append('\n');
        }
        return b.toString();
    }
}
