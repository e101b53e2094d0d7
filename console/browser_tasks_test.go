package console_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// searchTasks drives the Tasks page of TestBrowser: the 40 tasks of the
// minute spike (keys bt-m30-…) found by topic and key prefix, three pages
// of 15, each task once; a row's link opens its task; the task page finds
// a task by id alone.
func (b *driver) searchTasks(topic, keyPrefix string, want int, shots string) {
	b.t.Helper()
	b.open("/ui/#/tasks")
	b.run(chromedp.SendKeys(chromedp.ID("tasks-topic"), topic),
		chromedp.SendKeys(chromedp.ID("tasks-key"), keyPrefix),
		chromedp.SetValue(chromedp.ID("tasks-limit"), "15"),
		chromedp.Click(chromedp.Search(`//form[@id="tasks-form"]//button`)))
	seen := map[string]int{}
	for page := 1; ; page++ {
		n := min(15, want-15*(page-1))
		b.waitEval(`document.getElementById('tasks-count').dataset.count`, fmt.Sprint(n))
		ids, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`[...document.querySelectorAll('#tasks-table tbody tr')].map(r => r.dataset.id + '|' + r.cells[1].textContent + '|' + r.cells[2].textContent).join(',')`))
		if err != nil {
			b.t.Fatalf("browser: %v", err)
		}
		for _, row := range strings.Split(ids, ",") {
			id, rest, _ := strings.Cut(row, "|")
			if !strings.HasPrefix(id, keyPrefix) || rest != "pending|"+topic {
				b.t.Errorf("Tasks page %d lists %q, want pending tasks of %s keyed %s…", page, row, topic, keyPrefix)
			}
			seen[id]++
		}
		if page == 1 {
			b.screenshot(filepath.Join(shots, "console-tasks.png"))
		}
		next, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`!document.getElementById('tasks-next').disabled`))
		if err != nil {
			b.t.Fatalf("browser: %v", err)
		}
		if !next {
			break
		}
		if page > 5 {
			b.t.Fatal("Tasks page: paging does not end")
		}
		first := strings.SplitN(ids, "|", 2)[0]
		b.run(chromedp.Click(chromedp.ID("tasks-next")))
		b.waitEval(`document.querySelector('#tasks-table tbody tr').dataset.id !== '`+first+`'`, "true")
	}
	if len(seen) != want {
		b.t.Errorf("Tasks pages listed %d distinct tasks, want %d", len(seen), want)
	}
	for id, n := range seen {
		if n != 1 {
			b.t.Errorf("Tasks pages listed %s %d times", id, n)
		}
	}
	// A row's link opens the task.
	b.run(chromedp.Click(chromedp.Search(`//table[@id="tasks-table"]//tbody/tr[1]//a`)))
	b.waitText("#task-state", "pending")
	// By id alone: the task page fills in the current due time.
	id := keyPrefix + "07"
	b.open("/ui/#/task?id=" + id)
	b.waitText("#task-title", id)
	b.waitText("#task-state", "pending")
	b.waitEval(`document.getElementById('task-at').value !== ''`, "true")
}

// narrowAndDark checks the overview at 420 px (no card wider than its
// box, no sideways scrolling) and in the dark theme of
// prefers-color-scheme.
func (b *driver) narrowAndDark(shots string) {
	b.t.Helper()
	b.run(chromedp.EmulateViewport(420, 900))
	defer b.run(chromedp.EmulateViewport(1360, 1000)) // the window's size again, for the pages after
	b.open("/")
	b.waitEval(`document.getElementById('total-accepted').textContent !== '–'`, "true")
	b.waitEval(`[...document.querySelectorAll('.card')].filter(c => c.scrollWidth > c.clientWidth + 1).length`, "0")
	b.waitEval(`document.documentElement.scrollWidth <= window.innerWidth`, "true")
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	dark := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, dark); err != nil {
		b.t.Fatalf("browser: emulate dark: %v", err)
	}
	b.waitEval(`getComputedStyle(document.body).backgroundColor`, "rgb(18, 21, 28)")
	b.screenshot(filepath.Join(shots, "console-narrow-dark.png"))
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{}); err != nil {
		b.t.Fatalf("browser: emulate light: %v", err)
	}
	b.waitEval(`getComputedStyle(document.body).backgroundColor`, "rgb(246, 247, 249)")
}
