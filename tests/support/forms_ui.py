"""Browser helpers for the form-task pages: the task frame, its text, and the page's ready state."""

from selenium.webdriver.common.by import By

from tests.support.browser import wait_for

READY = "const e = document.querySelector(\"#assignment[data-ready='true']\"); return e ? e.dataset.id : null;"


def in_frame(browser):
    browser.switch_to.default_content()
    frame = wait_for(browser, lambda d: d.find_element(By.ID, "task-frame"))
    browser.switch_to.frame(frame)
    wait_for(browser, lambda d: d.find_elements(By.ID, "mturk_form"))
